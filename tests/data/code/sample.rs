//! A fixture for Rust.
use std::fmt;

pub const MAX: usize = 10;
static GREETING: &str = "hi";

/// A point.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

pub enum Shape {
    Circle(f64),
    Square(f64),
}

pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Shape {
    fn area(&self) -> f64 {
        match self {
            Shape::Circle(r) => 3.14 * r * r,
            Shape::Square(s) => s * s,
        }
    }
}

impl Point {
    /// Makes a point.
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }
}

type Pair = (i32, i32);

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

mod inner {
    pub fn helper() {}
}

fn main() {
    println!("{}", square!(2));
}
