// A fixture for Kotlin.
package sample

const val MAX = 10

val greeting = "hi"

/** A shape. */
interface Shape {
    fun area(): Double
}

data class Circle(val radius: Double) : Shape {
    override fun area(): Double = 3.14 * radius * radius

    companion object {
        fun unit() = Circle(1.0)
    }
}

object Registry {
    val shapes = mutableListOf<Shape>()

    fun register(shape: Shape) {
        shapes.add(shape)
    }
}

enum class Color {
    RED, GREEN
}

typealias Shapes = List<Shape>

fun main() {
    println(Circle(2.0).area())
}
