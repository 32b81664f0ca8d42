package app

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// A container limit becomes a soft limit of 90% of it; GOMEMLIMIT in the environment wins over it.
func TestSetMemoryLimit(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	const container = 512 << 20
	for _, env := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(env, "") // restored when the test ends
		if err := os.Unsetenv(env); err != nil {
			t.Fatal(err)
		}
	}
	ratio := MemoryLimitRatio // a variable: the product is not a whole number, so not a constant int64
	want := int64(float64(container) * ratio)
	if got := SetMemoryLimit(logr.Discard(), memlimit.Limit(container)); got != want {
		t.Errorf("SetMemoryLimit = %d, want %d", got, want)
	}
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Errorf("the runtime's limit is %d, want %d", got, want)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "300MiB")
	if got := SetMemoryLimit(logr.Discard(), memlimit.Limit(container)); got != 0 {
		t.Errorf("with GOMEMLIMIT set, SetMemoryLimit = %d, want 0 (the environment's limit stands)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, the runtime's limit was changed to %d", got)
	}
}
