package main

import (
	"encoding/json"
	"net/http"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
