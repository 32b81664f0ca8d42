//go:build integration

// Package apis_test checks the CRDs on a real API server: what they accept and what they reject, with
// messages that name the offending field.
package apis_test

import (
	"os"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.MainOne(m, testenv.Options{}, &env)) }
