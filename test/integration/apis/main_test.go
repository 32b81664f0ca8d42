// Package apis_test checks the CRDs on a real API server: what they accept and what they reject, with
// messages that name the offending field.
package apis_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}
