package auth

import "github.com/likes/likes/pkg/ids"

// UserFromHeader validates the values of the X-User-ID header: exactly one, and a valid user id
// outside the benchmark namespace (ErrReservedUser). Two values are refused rather than picking
// one, because a proxy that appends instead of replacing would otherwise let the client choose.
func UserFromHeader(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrNoUser
	case 1:
	default:
		return "", ErrManyUsers
	}
	if values[0] == "" {
		return "", ErrNoUser
	}
	if err := ids.ValidUserID(values[0]); err != nil {
		return "", err
	}
	if err := notReserved(values[0]); err != nil {
		return "", err
	}
	return values[0], nil
}
