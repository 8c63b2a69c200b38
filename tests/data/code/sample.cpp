// A fixture for C++.
#include <string>

namespace geo {

class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
};

class Circle : public Shape {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return 3.14 * r_ * r_; }

private:
    double r_;
};

struct Point {
    int x, y;
};

double Circle_perimeter(const Circle &c);

}  // namespace geo

template <typename T>
T maximum(T a, T b) {
    return a > b ? a : b;
}

double geo::Circle_perimeter(const geo::Circle &c) {
    return 0;
}

int main() {
    return 0;
}
