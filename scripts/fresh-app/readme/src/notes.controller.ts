import { BadRequestException, Body, Controller, Get, NotFoundException, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { PipeTransform } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { IdempotencySession, Idempotent } from '@idempotent-orders/nest-idempotency';
import type { ClientSession, Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { ApiKeyGuard } from './api-key.guard.js';

interface Note {
  _id: string;
  tenant: string;
  text: string;
}

/** Validation in a pipe (or Nest's ValidationPipe): a body it refuses never reaches the handler and leaves the key unused. */
class NoteBody implements PipeTransform<unknown, { text: string }> {
  transform(body: unknown): { text: string } {
    const text = (body as { text?: unknown } | null)?.text;
    if (typeof text !== 'string' || text === '') throw new BadRequestException('text: a non-empty string');
    return { text };
  }
}

@Controller('notes')
@UseGuards(ApiKeyGuard)
export class NotesController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  @Post()
  @Idempotent({ operation: 'notes.create' })
  async create(@Req() req: { tenant: string }, @Body(NoteBody) body: { text: string }, @IdempotencySession() session: ClientSession) {
    const note: Note = { _id: `note_${randomUUID()}`, tenant: req.tenant, text: body.text };
    await this.notes().insertOne(note, { session }); // commits with the key's record, or not at all
    return { id: note._id, text: note.text };
  }

  @Get(':id')
  async get(@Req() req: { tenant: string }, @Param('id') id: string) {
    const note = await this.notes().findOne({ _id: id, tenant: req.tenant });
    if (!note) throw new NotFoundException();
    return { id: note._id, text: note.text };
  }

  private notes() {
    return this.connection.collection<Note>('notes');
  }
}
