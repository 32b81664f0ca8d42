package dnsserver

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// freePort finds a loopback port free for both UDP and TCP.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = l.Close()
		if err == nil {
			_ = pc.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// syncBuffer collects named's log while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSecondary runs Debian's named as a secondary of zone, transferring from primary with TSIG.
// It is killed when the test ends.
func startSecondary(t *testing.T, zone string, primary netip.AddrPort, keyName, secret string) (addr string, log *syncBuffer) {
	t.Helper()
	named := needTool(t, "named")
	dir := t.TempDir()
	port := freePort(t)
	conf := fmt.Sprintf(`options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
};
controls { };
key "%[3]s" {
	algorithm hmac-sha256;
	secret "%[4]s";
};
zone "%[5]s" {
	type secondary;
	primaries { %[6]s port %[7]d key "%[3]s"; };
	file "%[1]s/%[5]s.db";
};
`, dir, port, keyName, secret, zone, primary.Addr(), primary.Port())
	confPath := filepath.Join(dir, "named.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	log = &syncBuffer{}
	cmd := exec.Command(named, "-c", confPath, "-g", "-n", "1")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() || os.Getenv("NAMED_LOG") != "" {
			t.Logf("named log:\n%s", log)
		}
	})
	return fmt.Sprintf("127.0.0.1:%d", port), log
}

// tsigKeygen makes a key with Debian's tsig-keygen, as an operator would.
func tsigKeygen(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(needTool(t, "tsig-keygen"), "-a", "hmac-sha256", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`secret "([^"]+)"`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no secret in %s", out)
	}
	return string(m[1])
}

func querySOASerial(addr, zone string) (uint32, error) {
	m := new(dns.Msg).SetQuestion(zone, dns.TypeSOA)
	resp, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil {
		return 0, err
	}
	if len(resp.Answer) != 1 {
		return 0, fmt.Errorf("SOA answer %s %v", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	return resp.Answer[0].(*dns.SOA).Serial, nil
}

// TestBINDSecondary has a real BIND carry our zone: it transfers by AXFR with TSIG, answers the
// simple records as we do, and follows a change within seconds of our NOTIFY.
func TestBINDSecondary(t *testing.T) {
	const key = "transfer-key."
	secret := tsigKeygen(t, "transfer-key")
	s := startServer(t, Options{TSIGKeys: map[string]string{key: secret}, NotifyKey: key})
	bind, log := startSecondary(t, "example.com", s.Addr(), "transfer-key", secret)
	data := ZoneData{Endpoints: exampleZone(), Nameservers: []string{"ns1.example.com", "ns2.example.net"}, Secondaries: []string{bind}}
	first := setZone(t, s, "example.com", data)

	waitSerial := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err := querySOASerial(bind, "example.com.")
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("BIND serial %d (%v), want %d\n%s", got, err, want, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitSerial(first.Serial)

	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.com.", dns.TypeA},
		{"www.example.com.", dns.TypeAAAA},
		{"app.example.com.", dns.TypeA},
		{"chain.example.com.", dns.TypeA},
		{"txt.example.com.", dns.TypeTXT},
		{"mail.example.com.", dns.TypeMX},
		{"a.b.c.example.com.", dns.TypeA},
		{"x.wild.example.com.", dns.TypeA},
		{"example.com.", dns.TypeNS},
		{"nope.example.com.", dns.TypeA},
		{"txt.example.com.", dns.TypeA},
	} {
		ours := exchange(t, s, q.name, q.qtype, queryOpts{})
		m := new(dns.Msg).SetQuestion(q.name, q.qtype)
		theirs, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, bind)
		if err != nil {
			t.Fatal(err)
		}
		if !theirs.Authoritative || theirs.Rcode != ours.Rcode {
			t.Errorf("%s %s: BIND rcode %s AA=%v, ours %s", q.name, dns.TypeToString[q.qtype],
				dns.RcodeToString[theirs.Rcode], theirs.Authoritative, dns.RcodeToString[ours.Rcode])
		}
		a, b := rrText(ours.Answer), rrText(theirs.Answer)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("%s %s: BIND %q, ours %q", q.name, dns.TypeToString[q.qtype], b, a)
		}
	}

	data.Endpoints = append(data.Endpoints, ep("new.example.com", "A", 60, "192.0.2.99"))
	changed := time.Now()
	second := setZone(t, s, "example.com", data)
	if second.Serial == first.Serial {
		t.Fatal("serial did not move")
	}
	waitSerial(second.Serial)
	t.Logf("BIND had serial %d %v after the change", second.Serial, time.Since(changed).Round(time.Millisecond))
	m := new(dns.Msg).SetQuestion("new.example.com.", dns.TypeA)
	resp, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, bind)
	if err != nil || len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
		t.Errorf("BIND answers %v, %v", resp, err)
	}
}
