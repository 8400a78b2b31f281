-- wrk-like.lua: wrk POSTs likes of one post, each by a fresh user (a per-thread prefix plus a
-- counter), and checks every answer: a 200 whose body says "liked":true is a counted like;
-- anything else is counted as not ok, and the last such status is kept. At the end it prints
--   likes: N ok, M not ok (last status S)
-- which scripts/likecost.sh reads. (wrk-likes.lua sends the same likes without checking them.)
--
--   wrk -t1 -c64 -d10s -s scripts/wrk-like.lua http://127.0.0.1:29080 -- POST RUN
--
-- POST is the post id (default hot); RUN prefixes user ids so that runs against the same Redis
-- never repeat a user (default: the start time).
--
-- The user is named in X-User-ID, which only a writer run with TRUST_USER_HEADER=true believes
-- (bench-writer.sh and likecost.sh start theirs so); any other writer answers 401.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  local run = args[2] or tostring(os.time())
  prefix = run .. "-" .. tid .. "-"
  path = "/like/" .. (args[1] or "hot")
  seq = 0
  ok, bad, last = 0, 0, "-"
end

function request()
  seq = seq + 1
  -- Content-Length: 0, as loadgen sends it, so both send the writer the same bytes.
  return wrk.format("POST", path, { ["X-User-ID"] = prefix .. seq, ["Content-Length"] = "0" })
end

function response(status, headers, body)
  if status == 200 and body:find('"liked":true', 1, true) then
    ok = ok + 1
  else
    bad = bad + 1
    last = tostring(status)
  end
end

function done(summary, latency, requests)
  local good, notok, status = 0, 0, "-"
  for _, t in ipairs(threads) do
    good = good + t:get("ok")
    notok = notok + t:get("bad")
    if t:get("last") ~= "-" then status = t:get("last") end
  end
  io.write(string.format("likes: %d ok, %d not ok (last status %s)\n", good, notok, status))
end
