// Package sample is a fixture for Go.
package sample

import "fmt"

const MaxSize = 10

var counter int

// Shape is something with an area.
type Shape interface {
	Area() float64
}

// Rect is a rectangle.
type Rect struct {
	W, H float64
}

type ID = string

// Area returns the area.
func (r *Rect) Area() float64 {
	return r.W * r.H
}

func NewRect(w, h float64) *Rect {
	return &Rect{W: w, H: h}
}

func main() {
	fmt.Println(NewRect(1, 2).Area())
}
