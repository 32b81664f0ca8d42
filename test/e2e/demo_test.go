//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
)

// `make run` with no cluster seeds the demo and prints dig commands, each with the address it should
// answer; Debian's dig, run as printed, gets those answers.
func TestMakeRunDemoAnswersDig(t *testing.T) {
	dig := bind.Tool(t, "dig")
	run := startMakeRun(t)

	// Each printed query is "  dig ...   # who, <address>".
	type query struct {
		args []string
		want string
	}
	queries := make(chan query, 8)
	go func() {
		sc := bufio.NewScanner(run.stdout)
		for sc.Scan() {
			line := sc.Text()
			t.Log(line)
			command, comment, ok := strings.Cut(strings.TrimSpace(line), "#")
			if !ok || !strings.HasPrefix(command, "dig @") {
				continue
			}
			want := strings.TrimSpace(comment[strings.LastIndex(comment, ",")+1:])
			queries <- query{args: strings.Fields(command)[1:], want: want}
		}
		close(queries)
	}()

	var got []query
	deadline := time.After(4 * time.Minute)
	for len(got) < 3 {
		select {
		case q, ok := <-queries:
			if !ok {
				t.Fatalf("make run closed its output after %d dig commands", len(got))
			}
			got = append(got, q)
		case err := <-run.exited:
			t.Fatalf("make run exited before printing the dig commands: %v", err)
		case <-deadline:
			t.Fatalf("%d dig commands printed within 4 minutes, want at least 3", len(got))
		}
	}
	// More may follow at once; the three above already include two countries and no subnet.
	time.Sleep(200 * time.Millisecond)
	for len(queries) > 0 {
		got = append(got, <-queries)
	}

	subnets, answers := 0, map[string]bool{}
	for _, q := range got {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, dig, append(q.args, "+short", "+tries=1", "+time=2")...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("dig %s: %v\n%s", strings.Join(q.args, " "), err, out)
		}
		lines := strings.Fields(strings.TrimSpace(string(out)))
		if len(lines) == 0 || lines[len(lines)-1] != q.want {
			t.Errorf("dig %s answered %q, want the chain to end in %s", strings.Join(q.args, " "), lines, q.want)
		}
		if strings.Contains(strings.Join(q.args, " "), "+subnet=") {
			subnets++
			answers[q.want] = true
		}
	}
	if subnets < 2 || subnets == len(got) {
		t.Errorf("printed %d dig commands, %d with +subnet=: want two countries and one without a subnet", len(got), subnets)
	}
	if len(answers) < 2 {
		t.Errorf("every client subnet gets the same answer %v: the demo shows no geo routing", answers)
	}

	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-run.exited:
		if err != nil {
			t.Errorf("make run exited with %v after Ctrl-C, want 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("make run still running a minute after Ctrl-C")
	}
}
