import { ApiProperty } from '@nestjs/swagger';
import { ORDER_STATES } from '../order-state.js';
import { CAPTURE_MODES, FAILURE } from '../order.js';

/*
 * The documented shape of orderView() (order.view.ts). These classes only
 * describe: nothing instantiates them. test/platform/openapi.e2e-spec.ts validates
 * real bodies against them with unknown fields refused, so a field added to
 * the view without a line here fails that test.
 */

export class OrderItemResponse {
  @ApiProperty({ example: 'sku_1' })
  sku: string;

  @ApiProperty({ type: 'integer', example: 2, minimum: 1 })
  quantity: number;

  @ApiProperty({ type: 'integer', example: 1250, minimum: 0, description: 'Unit price in minor units (cents)' })
  unitPriceMinor: number;
}

export class OrderResponse {
  @ApiProperty({ example: 'ord_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^ord_[0-9a-f]{24}$' })
  id: string;

  @ApiProperty({
    enum: ORDER_STATES,
    example: 'saved',
    description:
      'A 201 of an automatic capture is `saved`, of a manual one `authorized`; a 202 is `processing`. `pending` and `charged` are seen only while an attempt is in progress. See the state machine in the README.',
  })
  state: string;

  @ApiProperty({ example: 'cus_123', description: 'After an erasure of this customer, a pseudonym (`erased_...`)' })
  customerId: string;

  @ApiProperty({ example: 'USD', pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code' })
  currency: string;

  @ApiProperty({ type: 'integer', example: 2500, minimum: 1, description: 'Total in minor units, computed by the server from the items' })
  amountMinor: number;

  @ApiProperty({
    enum: CAPTURE_MODES,
    example: 'automatic',
    description: '`automatic`: charged at create. `manual`: authorized at create; POST .../capture or .../void follows',
  })
  capture: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 2500, description: 'Held on the card by the provider (minor units)' })
  authorizedMinor: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 2500, description: 'Taken by the provider: at most `authorizedMinor`' })
  capturedMinor: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 0,
    description: 'Sum of the refunds that succeeded: at most `capturedMinor`',
  })
  refundedMinor: number;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'Manual capture: when the authorization lapses if nobody captures it; null otherwise',
  })
  authorizationExpiresAt: string | null;

  @ApiProperty({ type: [OrderItemResponse], description: 'The items as created' })
  items: OrderItemResponse[];

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'pay_0f2a9c4b7d1e4e8a9b3c5d6e7f8a9b0c',
    description: 'Set once the provider has charged',
  })
  paymentId: string | null;

  // null is listed in the enum too: OpenAPI 3.0.3 says `nullable` does not widen an `enum`.
  @ApiProperty({
    enum: [...Object.values(FAILURE), null],
    nullable: true,
    example: null,
    description: 'Why a `failed` order failed; null otherwise',
  })
  failureReason: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'When the order was created (its key claimed)' })
  createdAt: string;
}

export class OrderPageResponse {
  @ApiProperty({ type: [OrderResponse], description: 'Newest first' })
  data: OrderResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}
