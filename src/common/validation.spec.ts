import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { ArgumentMetadata } from '@nestjs/common';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsInt, IsString, ValidateNested } from 'class-validator';
import { createValidationPipe, MAX_REPORTED_ERRORS, RequestValidationError } from './validation.js';

class Item {
  @IsString()
  sku!: string;

  @IsInt()
  quantity!: number;
}

class Basket {
  @ArrayMaxSize(3)
  @ValidateNested({ each: true })
  @Type(() => Item)
  items!: Item[];
}

const asBody: ArgumentMetadata = { type: 'body', metatype: Basket };
const refusal = async (value: unknown) => {
  try {
    await createValidationPipe().transform(value, asBody);
  } catch (error) {
    return error as RequestValidationError;
  }
  throw new Error('accepted');
};

describe('validation errors', () => {
  it('name the nested property like Nest does', async () => {
    const error = await refusal({
      items: [
        { sku: 'a', quantity: 1 },
        { sku: 2, quantity: 1 },
      ],
    });
    expect(error).toBeInstanceOf(RequestValidationError);
    expect(error.extensions).toEqual({ errors: ['items.1.sku must be a string'] });
  });

  it('are capped: a few messages, each bounded, and a count of the rest', async () => {
    const unknown = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`${i}`.padEnd(5_000, 'x'), 1]));
    const error = await refusal({ items: [{}, {}, {}], ...unknown });
    const errors = error.extensions!.errors as string[];
    expect(errors).toHaveLength(MAX_REPORTED_ERRORS);
    expect(Math.max(...errors.map((message) => message.length))).toBeLessThanOrEqual(203);
    expect(error.message).toMatch(/; and \d+ more$/);
    expect(error.message.length).toBeLessThan(3_000);
  });

  it('refuse an over-long array without validating its items', async () => {
    const error = await refusal({ items: Array.from({ length: 5_000 }, () => ({})) });
    expect(error.extensions).toEqual({ errors: ['items must contain no more than 3 elements'] });
  });

  it('report one message per field', async () => {
    const error = await refusal({ items: [{ sku: 1, quantity: 1.5 }] });
    expect(error.extensions).toEqual({ errors: ['items.0.sku must be a string', 'items.0.quantity must be an integer number'] });
  });

  it('accept a valid body', async () => {
    await expect(createValidationPipe().transform({ items: [{ sku: 'a', quantity: 1 }] }, asBody)).resolves.toBeInstanceOf(Basket);
  });
});
