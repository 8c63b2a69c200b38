# A fixture for Ruby.
require "json"

MAX = 10

module Geometry
  # A shape.
  class Shape
    attr_reader :name

    def initialize(name)
      @name = name
    end

    def area
      0
    end

    def self.create(name)
      new(name)
    end
  end
end

def helper(x)
  x * 2
end
