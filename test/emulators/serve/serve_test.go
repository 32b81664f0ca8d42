package serve

import (
	"net/http"
	"slices"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "localhost:0"} {
		if srv, _, err := Loopback(addr, http.NotFoundHandler()); err == nil {
			_ = srv.Close()
			t.Errorf("Loopback(%q) listened, want refused", addr)
		}
	}
	srv, a, err := Loopback("127.0.0.1:0", http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + a.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d from the handler, want 404", resp.StatusCode)
	}
}

func TestZonesFlag(t *testing.T) {
	var z Zones
	for _, v := range []string{"a.example", " b.example , c.example ,", ""} {
		if err := z.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a.example", "b.example", "c.example"}; !slices.Equal(z, want) {
		t.Errorf("zones %v, want %v", z, want)
	}
}
