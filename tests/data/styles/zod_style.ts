// Schemas in the shape of zod 4's code: methods added by assignment inside a constructor,
// overloads, and names taken out of objects by destructuring.
import * as core from "./core";
import * as util from "./util";

const { isFunction, defineLazy: lazy, jsonStringifyReplacer = JSON.stringify, ...helpers } = util;
export const [MIN_INT, , MAX_INT = 2 ** 31 - 1] = core.limits;
const { issues: { format: formatIssues } } = core;

export interface ZodNumber extends core.$ZodNumber {
  gt(value: number, params?: string): ZodNumber;
}

export const ZodNumber = core.$constructor("ZodNumber", (inst, def) => {
  core.$ZodNumber.init(inst, def);
  inst.gt = (value, params) => inst.check(checks.gt(value, params));
  // lte is an alias of max
  inst.lte = (value, params) => inst.check(checks.lte(value, params));
  inst.positive = function (params) {
    return inst.check(checks.gt(0, params));
  };
  inst.minValue = 0;
});

export class ZodError extends Error {
  format(): string;
  format(mapper: (issue: string) => string): string;
  format(mapper?: (issue: string) => string): string {
    return formatIssues(this, mapper);
  }
}

/** Parses a value, throwing on failure. */
ZodError.prototype.toString = function () {
  return this.message;
};

export function parse(schema: string): string;
export function parse(schema: string, value?: unknown): string {
  return String(value ?? schema);
}
