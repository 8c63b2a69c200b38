// A fixture for TypeScript.
export interface Point {
  x: number;
  y: number;
  norm(): number;
}

export type Id = string | number;

enum Color {
  Red,
  Green,
}

export const ORIGIN: Point = { x: 0, y: 0, norm: () => 0 };

/** A repository. */
export abstract class Repo<T> implements Store {
  private items: T[] = [];

  constructor(private readonly name: string) {}

  @logged
  add(item: T): void {
    this.items.push(item);
  }

  abstract find(id: Id): T | undefined;
}

export function distance(a: Point, b: Point): number {
  return Math.hypot(a.x - b.x, a.y - b.y);
}

namespace Geometry {
  export function area(r: number): number {
    return r * r;
  }
}
