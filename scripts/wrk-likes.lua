-- wrk-likes.lua: wrk POSTs likes of one post, each by a new user, so every like is stored,
-- counted and published (the case a viral post's shard has to absorb).
--
--   wrk -t2 -c64 -d20s -s scripts/wrk-likes.lua http://127.0.0.1:8080 -- POST RUN DELAY_MS
--
-- POST is the post id (default hot); RUN prefixes user ids so that runs against the same Redis
-- never repeat a user (default: the start time); DELAY_MS (default 0) makes each connection wait
-- that many milliseconds between its answer and its next like, for an offered load of about
-- connections / (DELAY_MS + latency) likes per second.
--
-- The user is named in X-User-ID, which only a writer run with TRUST_USER_HEADER=true believes
-- (bench-writer.sh and likecost.sh start theirs so); any other writer answers 401.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  post = args[1] or "hot"
  run = args[2] or tostring(os.time())
  pause = tonumber(args[3] or "0")
  seq = 0
  path = "/like/" .. post
end

function request()
  seq = seq + 1
  return wrk.format("POST", path, { ["X-User-ID"] = run .. "-" .. tid .. "-" .. seq })
end

function delay()
  return pause
end
