-- A fixture for Lua.
local M = {}

MAX = 10

-- Adds two numbers.
function add(a, b)
  return a + b
end

local function helper(x)
  return x * 2
end

function M.greet(name)
  return "hi " .. name
end

function M:method()
  return self
end

M.square = function(x)
  return x * x
end

return M
