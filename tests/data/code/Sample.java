// A fixture for Java.
package sample;

import java.util.List;

/** A shape. */
public interface Shape {
    double area();
}

public class Circle implements Shape {
    public static final double PI = 3.14;
    private double radius;

    public Circle(double radius) {
        this.radius = radius;
    }

    @Override
    public double area() {
        return PI * radius * radius;
    }

    static class Builder {
        Circle build() {
            return new Circle(1);
        }
    }
}

enum Color {
    RED,
    GREEN;

    boolean warm() {
        return this == RED;
    }
}

record Pair(int a, int b) {}
