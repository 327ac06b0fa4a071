export {
  IdempotentMessages,
  inboxId,
  type IdempotentMessagesOptions,
  type InboundMessage,
  type MessageBatchOutcome,
  type MessageEffect,
} from './idempotent-messages.js';
