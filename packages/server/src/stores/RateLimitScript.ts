/**
 * The Lua script of `RateLimitStore.layerRedis`: one call reads the connection's cool-down and
 * evaluates every matched rule, then commits (API-CONVENTIONS "Rate limiting"). It mirrors
 * `@svc/domain/RateLimitAlgorithm` operation for operation; numbers are stored with `%.17g` so a
 * fractional token count survives the round trip exactly.
 *
 * KEYS[1]: the cool-down key; KEYS[1 + i]: the state of rule i (all under one hash tag).
 * ARGV[1]: '' to read the clock from Redis `TIME` (production), else epoch ms (tests only; expiries
 * then get a minute of slack, as Redis expires keys on its own clock).
 * ARGV[1 + 4(i − 1) + 1 … 4]: rule i's observe flag ('1'/'0'), kind ('fw', 'sc', 'sl', 'tb') and
 * two parameters (window ms and limit; capacity and refill per second for 'tb').
 * Reply: { now, cool-down end or nil, admitted 0/1, then per rule allowed 0/1, retry s (0), remaining }.
 */
export const rateLimitScript = `
local now
local slack = 0
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  -- an injected clock is not the one Redis expires keys by
  now = tonumber(ARGV[1])
  slack = 60000
end
local function num(x) return string.format('%.17g', x) end
local function retry(ms) return math.max(1, math.ceil(ms / 1000)) end

local untilMs = tonumber(redis.call('GET', KEYS[1]) or '')
local cooling = untilMs ~= nil and untilMs > now
local admitted = not cooling
local rules = {}

for i = 1, #KEYS - 1 do
  local at = 1 + (i - 1) * 4
  local r = { key = KEYS[i + 1], observe = ARGV[at + 1] == '1', kind = ARGV[at + 2],
    a = tonumber(ARGV[at + 3]), b = tonumber(ARGV[at + 4]), retry = 0 }
  if r.kind == 'fw' then
    local w, limit = r.a, r.b
    r.idx = math.floor(now / w)
    local s = redis.call('HMGET', r.key, 'i', 'c')
    r.count = 0
    if tonumber(s[1]) == r.idx then r.count = tonumber(s[2]) end
    r.allowed = r.count < limit
    if not r.allowed then r.retry = retry((r.idx + 1) * w - now) end
  elseif r.kind == 'sc' then
    local w, limit = r.a, r.b
    r.idx = math.floor(now / w)
    r.e = now - r.idx * w
    local s = redis.call('HMGET', r.key, 'i', 'c', 'p')
    local si = tonumber(s[1])
    r.cur, r.prev = 0, 0
    if si == r.idx then
      r.cur, r.prev = tonumber(s[2]), tonumber(s[3])
    elseif si == r.idx - 1 then
      r.prev = tonumber(s[2])
    end
    r.allowed = r.cur + math.floor(r.prev * (w - r.e) / w) < limit
    if not r.allowed then
      local need, weight, offset = limit - r.cur, r.prev, 0
      if r.cur >= limit then need, weight, offset = limit, r.cur, w end
      r.retry = retry(offset + w - math.ceil(need * w / weight) + 1 - r.e)
    end
  elseif r.kind == 'sl' then
    local w, limit = r.a, r.b
    redis.call('ZREMRANGEBYSCORE', r.key, '-inf', num(now - w))
    r.count = redis.call('ZCARD', r.key)
    r.allowed = r.count < limit
    if not r.allowed then
      local blocking = redis.call('ZRANGE', r.key, r.count - limit, r.count - limit, 'WITHSCORES')
      r.retry = retry(tonumber(blocking[2]) + w - now)
    end
  elseif r.kind == 'tb' then
    local capacity, rate = r.a, r.b
    local s = redis.call('HMGET', r.key, 't', 'at')
    r.tokens = capacity
    if s[1] then r.tokens = math.min(capacity, tonumber(s[1]) + (now - tonumber(s[2])) * rate / 1000) end
    r.allowed = r.tokens >= 1
    if not r.allowed then r.retry = math.max(1, math.ceil((1 - r.tokens) / rate)) end
  else
    return redis.error_reply('unknown rate-limit algorithm ' .. tostring(r.kind))
  end
  if not r.allowed and not r.observe then admitted = false end
  rules[i] = r
end

local reply = { now, false, admitted and 1 or 0 }
if cooling then reply[2] = untilMs end
for i, r in ipairs(rules) do
  local consume = r.observe or admitted
  local remaining
  if r.kind == 'fw' then
    if consume then
      r.count = r.count + 1
      redis.call('HSET', r.key, 'i', num(r.idx), 'c', num(r.count))
      redis.call('PEXPIRE', r.key, num((r.idx + 1) * r.a - now + slack))
    end
    remaining = r.b - r.count
  elseif r.kind == 'sc' then
    if consume then
      r.cur = r.cur + 1
      redis.call('HSET', r.key, 'i', num(r.idx), 'c', num(r.cur), 'p', num(r.prev))
      redis.call('PEXPIRE', r.key, num((r.idx + 2) * r.a - now + slack))
    end
    remaining = r.b - (r.cur + math.floor(r.prev * (r.a - r.e) / r.a))
  elseif r.kind == 'sl' then
    if consume then
      r.count = r.count + 1
      redis.call('ZADD', r.key, num(now), num(now) .. ':' .. r.count)
      redis.call('PEXPIRE', r.key, num(r.a + slack))
    end
    remaining = r.b - r.count
  else
    if consume and r.tokens >= 1 then
      r.tokens = r.tokens - 1
      redis.call('HSET', r.key, 't', num(r.tokens), 'at', num(now))
      redis.call('PEXPIRE', r.key, num(math.ceil((r.a - r.tokens) * 1000 / r.b) + 1000 + slack))
    end
    remaining = math.floor(r.tokens)
  end
  reply[3 + 3 * (i - 1) + 1] = r.allowed and 1 or 0
  reply[3 + 3 * (i - 1) + 2] = r.retry
  reply[3 + 3 * (i - 1) + 3] = math.max(0, remaining)
end
return reply
`
