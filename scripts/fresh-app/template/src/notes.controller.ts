import { BadRequestException, Body, Controller, Get, Headers, Post, Res } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import {
  IdempotencyAttempts,
  IdempotencyKey,
  IdempotencyService,
  Idempotent,
  sendIdempotentResult,
  TransactionRunner,
  type IdempotencyKeyContext,
  type IdempotentResponse,
  type IdempotentWork,
} from '@idempotent-orders/nest-idempotency';
import type { FastifyReply } from 'fastify';
import type { Connection } from 'mongoose';

interface NoteBody {
  text: string;
}

interface Note {
  _id: string;
  tenant: string;
  text: string;
}

@Controller()
export class NotesController {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  @Get('health')
  health(): { status: string } {
    return { status: 'ok' };
  }

  @Post('notes')
  @Idempotent({ operation: 'notes.create' })
  async create(
    @Headers('x-tenant') tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() body: NoteBody,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (typeof body?.text !== 'string' || body.text.length === 0) throw new BadRequestException('text: a non-empty string');
    const request = this.idempotency.requestFor(key, tenant, body);
    sendIdempotentResult(reply, await this.idempotency.execute(request, this.work(tenant, body)));
  }

  private work(tenant: string, body: NoteBody): IdempotentWork {
    const notes = this.connection.collection<Note>('notes');
    return {
      // In the claim's transaction: the record and the note commit together, or neither does.
      begin: async (session, lease) => {
        await notes.insertOne({ _id: `note_${lease.claimId}`, tenant, text: body.text }, { session });
      },
      resume: (lease) =>
        this.transactions.run(async (session) => {
          const id = `note_${lease.claimId}`;
          const response: IdempotentResponse = {
            status: 201,
            headers: { 'content-type': 'application/json; charset=utf-8', location: `/notes/${id}` },
            body: JSON.stringify({ id, text: body.text }),
          };
          await this.attempts.complete(session, lease, 'created', response);
          return response;
        }),
    };
  }
}
