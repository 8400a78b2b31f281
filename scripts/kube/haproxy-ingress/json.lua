-- json.lua: a stand-in for the lua-json module that HAProxy Ingress's image installs from Alpine
-- and that the haproxy image of `make images-offline` lacks. haproxy-lua-http.lua requires it
-- when auth-request.lua loads (always), but calls it only for external authentication
-- (auth-url), which the likes Ingresses do not use: a call fails loudly rather than misencode.
local M = {}

function M.encode()
  error("json.encode: no JSON module in this image (scripts/kube/haproxy-ingress/json.lua)")
end

function M.decode()
  error("json.decode: no JSON module in this image (scripts/kube/haproxy-ingress/json.lua)")
end

return M
