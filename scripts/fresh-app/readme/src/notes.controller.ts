import { BadRequestException, Body, Controller, Get, NotFoundException, Param, Post, Req, UseGuards } from '@nestjs/common';
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

@Controller('notes')
@UseGuards(ApiKeyGuard)
export class NotesController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  @Post()
  @Idempotent({ operation: 'notes.create' })
  async create(@Req() req: { tenant: string }, @Body() body: { text?: unknown }, @IdempotencySession() session: ClientSession) {
    if (typeof body?.text !== 'string' || body.text === '') throw new BadRequestException('text: a non-empty string');
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
