// Package hash derives the short names Kuadrant derives: owner IDs, leaf names, authoritative-record
// names. They must match Kuadrant's byte for byte, or clusters running either cannot share a zone.
package hash

import (
	"crypto/sha256"
	"strings"

	"github.com/martinlindhe/base36"
)

// Base36 returns the first n characters of the lower-cased base36 encoding of the SHA-224 digest of s.
// n must not exceed 44, the length of the full encoding.
func Base36(s string, n int) string {
	sum := sha256.Sum224([]byte(s))
	return strings.ToLower(base36.EncodeBytes(sum[:]))[:n]
}
