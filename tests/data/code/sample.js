// A fixture for JavaScript.
import fs from "fs";

const LIMIT = 5;

/** Adds two numbers. */
function add(a, b) {
  return a + b;
}

const square = (x) => x * x;

export class Counter extends Base {
  constructor(start) {
    super();
    this.count = start;
  }

  increment() {
    return ++this.count;
  }

  static create() {
    return new Counter(0);
  }
}

export function* ids() {
  yield 1;
}

module.exports = { add };
