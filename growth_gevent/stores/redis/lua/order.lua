-- Names in byte order (the code point order of their UTF-8, as ZRANGEBYLEX orders them): Lua's < on
-- strings follows the server's locale. Prepended to the scripts that compare names.
local function before(a, b)
  for k = 1, math.min(#a, #b) do
    local x, y = a:byte(k), b:byte(k)
    if x ~= y then return x < y end
  end
  return #a < #b
end
