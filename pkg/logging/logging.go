// Package logging builds the zap logger every service uses: JSON to stderr in production, at a
// configurable level. Loggers are passed down explicitly; nothing here is global.
package logging

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a production JSON logger at level (debug, info, warn, error) that writes to out
// (the stderr a service's run was given) and names the service in every line.
func New(service, level string, out io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(out)), lvl)
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(out)))).
		With(zap.String("service", service)), nil
}
