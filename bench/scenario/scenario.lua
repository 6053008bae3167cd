-- wrk script for the scenario benchmark (bench/scenario/), V3 request forms.
--
--   wrk -tT -cC -dD --latency -s scenario.lua http://HOST:PORT -- MIX KEYS USERS DELAY_MS TAG
--
-- MIX      read   Q1..Q6, equally often
--          write  C1/C2/C3/C4 = 5/15/40/40 %
--          q1..q6, c1..c4, healthz   one request kind only
-- KEYS     file with one existing post id per line (p<u>.<k>); posts of the
--          data set, drawn uniformly by driver.py
-- USERS    number of users (u0 .. u<USERS-1> exist)
-- DELAY_MS pause of each connection after each answer (0: closed loop); with
--          C connections the offered rate is about C * 1000 / (DELAY_MS + latency)
-- TAG      makes the ids of created items unique across runs
--
-- The request bodies are the ones driver.py sends in V3 (see driver.py).

local ADJ = {"brave", "calm", "eager", "fancy", "gentle", "happy", "jolly", "kind",
             "lively", "merry", "nice", "proud", "silly", "witty", "zany", "bold"}
local NOUN = {"otter", "falcon", "panda", "tiger", "koala", "lynx", "heron", "bison",
              "gecko", "moose", "raven", "shark", "whale", "zebra", "yak", "wolf"}

local function username(u)  -- mirrors scenario.username()
  return ADJ[(u % 16) + 1] .. "_" .. NOUN[(math.floor(u / 16) % 16) + 1] .. u
end

local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local mix, posts, nposts, nusers, delay_ms, tag
local seq = 0
local text
local H = {["Content-Type"] = "application/json"}
-- A daemon with auth.tokens_file (docs/security.md) wants a bearer token: the
-- first line of $FEEDD_TOKEN_FILE, else $FEEDD_TOKEN (never an argument).
local function bearer_token()
  local file = os.getenv("FEEDD_TOKEN_FILE")
  if file and file ~= "" then
    local f = assert(io.open(file), "cannot read FEEDD_TOKEN_FILE " .. file)
    local line = f:read("*l")
    f:close()
    return line
  end
  return os.getenv("FEEDD_TOKEN")
end
local TOKEN = bearer_token()
if TOKEN and TOKEN ~= "" then
  H["Authorization"] = "Bearer " .. TOKEN
  wrk.headers["Authorization"] = "Bearer " .. TOKEN
end

function init(args)
  mix = args[1] or "read"
  local keys = args[2]
  nusers = tonumber(args[3] or "1")
  delay_ms = tonumber(args[4] or "0")
  tag = args[5] or "x"
  math.randomseed(os.time() * 1000 + tid * 7919)
  posts, nposts = {}, 0
  if keys and keys ~= "-" then
    for line in io.lines(keys) do
      nposts = nposts + 1
      posts[nposts] = line
    end
  end
  local words = {"lorem", "ipsum", "dolor", "sit", "amet", "feed", "view", "post",
                 "comment", "like", "user", "partition", "change", "document"}
  local parts = {}
  for i = 1, 400 do parts[i] = words[math.random(#words)] end
  text = table.concat(parts, " ")
  define_optional(args[6] == "debug")
end

local function rand_post() return posts[math.random(nposts)] end
local function rand_user() return math.random(0, nusers - 1) end
local function new_id(prefix)
  seq = seq + 1
  return prefix .. tag .. "." .. tid .. "." .. seq
end
local function now_iso()
  return os.date("!%Y-%m-%dT%H:%M:%S") .. string.format(".%03dZ", seq % 1000)
end
local function slice(lo, hi)
  local n = math.random(lo, hi)
  local off = math.random(1, #text - n)
  return string.sub(text, off, off + n - 1)
end

local function q1()
  local u = "u" .. rand_user()
  return wrk.format("GET", "/v1/containers/users/items/" .. u .. "/" .. u)
end
local function q2()
  local p = rand_post()
  return wrk.format("GET", "/v1/containers/posts/items/" .. p .. "/" .. p)
end
local function q3()
  return wrk.format("POST", "/v1/containers/users/query", H,
    '{"partitionKey":"u' .. rand_user() ..
    '","filter":{"type":"post"},"orderBy":"creationDate","descending":true}')
end
local function list(kind)
  return wrk.format("POST", "/v1/containers/posts/query", H,
    '{"partitionKey":"' .. rand_post() .. '","filter":{"type":"' .. kind ..
    '"},"orderBy":"creationDate"}')
end
local function q4() return list("comment") end
local function q5() return list("like") end
local function q6()
  return wrk.format("POST", "/v1/containers/feed/query", H,
    '{"partitionKey":"post","orderBy":"creationDate","descending":true,"limit":100}')
end
local function c1()
  local id = new_id("wu")
  return wrk.format("PUT", "/v1/containers/users/items/" .. id .. "/" .. id, H,
    '{"id":"' .. id .. '","userId":"' .. id .. '","type":"user","username":"n_' .. id .. '"}')
end
local function c2()
  local id = new_id("wp")
  local u = rand_user()
  return wrk.format("POST", "/v1/containers/posts/items", H,
    '{"id":"' .. id .. '","postId":"' .. id .. '","type":"post","userId":"u' .. u ..
    '","userUsername":"' .. username(u) .. '","title":"' .. slice(20, 80) ..
    '","content":"' .. slice(200, 1000) .. '","creationDate":"' .. now_iso() ..
    '","commentCount":0,"likeCount":0}')
end
local function reaction(kind, counter_path, prefix, with_content)
  local p = rand_post()
  local id = new_id(prefix)
  local u = rand_user()
  local body = '{"id":"' .. id .. '","postId":"' .. p .. '","type":"' .. kind ..
    '","userId":"u' .. u .. '","userUsername":"' .. username(u) .. '"'
  if with_content then body = body .. ',"content":"' .. slice(20, 300) .. '"' end
  body = body .. ',"creationDate":"' .. now_iso() .. '"}'
  return wrk.format("POST", "/v1/containers/posts/partitions/" .. p .. "/batch", H,
    '{"operations":[{"op":"create","body":' .. body ..
    '},{"op":"patch","id":"' .. p .. '","operations":[{"op":"incr","path":"' ..
    counter_path .. '","value":1}]}]}')
end
local function c3() return reaction("comment", "/commentCount", "wc", true) end
local function c4() return reaction("like", "/likeCount", "wl", false) end
local function healthz() return wrk.format("GET", "/healthz") end

local single = {q1 = q1, q2 = q2, q3 = q3, q4 = q4, q5 = q5, q6 = q6,
                c1 = c1, c2 = c2, c3 = c3, c4 = c4, healthz = healthz}
local reads = {q1, q2, q3, q4, q5, q6}

function request()
  if mix == "read" then
    return reads[math.random(6)]()
  elseif mix == "write" then
    local r = math.random(100)
    if r <= 5 then return c1()
    elseif r <= 20 then return c2()
    elseif r <= 60 then return c3()
    else return c4() end
  end
  return single[mix]()
end

-- delay() and response() are defined in init() only when needed: wrk checks
-- for them after init(), and each costs wrk time per request.
function define_optional(debug)
  if delay_ms > 0 then
    function delay() return delay_ms end
  end
  if debug then
    local bad = 0
    function response(status, headers, body)
      if status >= 300 then
        bad = bad + 1
        if bad <= 3 then io.stderr:write("HTTP " .. status .. ": " .. string.sub(body, 1, 200) .. "\n") end
      end
    end
  end
end
