/** Reads what a test's nats-server holds: the stream's messages in stream order, through a client of the test's own. */
import { jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { CloudEvent } from '../../src/outbox/cloud-event.js';

export interface StreamMessage {
  seq: number;
  subject: string;
  msgId: string | undefined;
  contentType: string | undefined;
  event: CloudEvent;
}

export async function readStream(url: string, stream = 'ORDER_EVENTS'): Promise<StreamMessage[]> {
  const connection = await connect({ servers: url, reconnect: false });
  try {
    const jsm = await jetstreamManager(connection);
    const info = await jsm.streams.info(stream).catch((error: unknown) => {
      if (error instanceof JetStreamApiError) return null;
      throw error;
    });
    if (!info) return [];
    const messages: StreamMessage[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const stored = await jsm.streams.getMessage(stream, { seq });
      if (!stored) continue;
      messages.push({
        seq,
        subject: stored.subject,
        msgId: stored.header?.get('Nats-Msg-Id'),
        contentType: stored.header?.get('Content-Type'),
        event: stored.json<CloudEvent>(),
      });
    }
    return messages;
  } finally {
    await connection.close();
  }
}

/** The stream's configuration as the broker holds it (throws when there is none). */
export async function streamConfig(url: string, stream = 'ORDER_EVENTS') {
  const connection = await connect({ servers: url, reconnect: false });
  try {
    const jsm = await jetstreamManager(connection);
    return (await jsm.streams.info(stream)).config;
  } finally {
    await connection.close();
  }
}

/** Deletes the stream, as an operator would with `nats stream rm`. */
export async function deleteStream(url: string, stream = 'ORDER_EVENTS'): Promise<void> {
  const connection = await connect({ servers: url, reconnect: false });
  try {
    await (await jetstreamManager(connection)).streams.delete(stream);
  } finally {
    await connection.close();
  }
}

/** Adds a stream of the operator's own (file storage), as `nats stream add` would. */
export async function addStream(url: string, name: string, subjects: string[]): Promise<void> {
  const connection = await connect({ servers: url, reconnect: false });
  try {
    await (await jetstreamManager(connection)).streams.add({ name, subjects });
  } finally {
    await connection.close();
  }
}
