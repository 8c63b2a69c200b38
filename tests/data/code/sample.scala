// A fixture for Scala.
package sample

/** A shape. */
trait Shape {
  def area: Double
}

case class Circle(radius: Double) extends Shape {
  def area: Double = 3.14 * radius * radius
}

object Registry {
  val limit = 10

  def register(s: Shape): Unit = {
    println(s)
  }
}

class Box(val size: Int) {
  def double(): Int = size * 2
}

type Shapes = List[Shape]

def helper(x: Int): Int = x * 2
