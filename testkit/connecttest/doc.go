// Package connecttest measures what a server spends on each new stream: a child process (the test
// binary run again) holds the client ends, so that the server's CPU time (getrusage of the
// benchmark process) is the server's alone, and so that the 20,000 descriptors one process may
// hold here go to the server's ends only. The child is a cheap client on purpose: a raw TCP dial,
// one fixed request, reads until the first data event, then nothing until it is told to close.
package connecttest
