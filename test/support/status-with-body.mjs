// A supertest status assertion that fails says what the server answered, not only the status: a one-off
// "expected 201, got 409" in a CI log names no problem code, and the run cannot be repeated to find it.
// Imported before each test file, in its module registry (the copy of supertest the test file gets).
import Test from 'supertest/lib/test.js';

const assertStatus = Test.prototype._assertStatus;
Test.prototype._assertStatus = function (status, res) {
  const error = assertStatus.call(this, status, res);
  if (error) {
    const body = res.text !== undefined ? res.text : JSON.stringify(res.body);
    error.message += `; the answer's body: ${String(body).slice(0, 600)}`;
  }
  return error;
};
