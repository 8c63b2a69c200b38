<?php
// A fixture for PHP.
namespace App;

const VERSION = "1.0";

interface Shape
{
    public function area(): float;
}

trait Named
{
    public function name(): string
    {
        return static::class;
    }
}

/** A circle. */
class Circle implements Shape
{
    use Named;

    private float $radius;

    public function __construct(float $radius)
    {
        $this->radius = $radius;
    }

    public function area(): float
    {
        return 3.14 * $this->radius ** 2;
    }
}

enum Suit
{
    case Hearts;
}

function helper(int $x): int
{
    return $x * 2;
}
