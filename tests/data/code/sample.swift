// A fixture for Swift.
import Foundation

let maxSize = 10

/// A shape.
protocol Shape {
    func area() -> Double
}

struct Circle: Shape {
    var radius: Double

    init(radius: Double) {
        self.radius = radius
    }

    func area() -> Double {
        return 3.14 * radius * radius
    }
}

class Registry {
    var shapes: [Shape] = []

    func add(_ shape: Shape) {
        shapes.append(shape)
    }
}

enum Color {
    case red
    case green
}

extension Circle {
    func diameter() -> Double {
        return radius * 2
    }
}

typealias Shapes = [Shape]

func helper(x: Int) -> Int {
    return x * 2
}
