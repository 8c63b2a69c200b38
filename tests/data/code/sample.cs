// A fixture for C#.
using System;

namespace Sample
{
    /// <summary>A shape.</summary>
    public interface IShape
    {
        double Area();
    }

    public class Circle : IShape
    {
        private readonly double radius;

        public Circle(double radius)
        {
            this.radius = radius;
        }

        public double Radius { get; }

        public double Area() => Math.PI * radius * radius;
    }

    public struct Point
    {
        public int X;
    }

    public enum Color { Red, Green }

    public record Pair(int A, int B);
}
