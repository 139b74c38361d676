package api

import (
	"bytes"
	"encoding/csv"
	"net"
	"testing"
	"time"
)

func TestWriteCSVRow(t *testing.T) {
	var b bytes.Buffer
	WriteCSVRow(&b, []string{"=1+1", "+x", "-x", "@x", "\tx", "\rx", "a,b", `say "hi"`, "plain", "-3", " pad", ""}, map[int]bool{9: true})
	want := `"'=1+1","'+x","'-x","'@x","'` + "\t" + `x","'` + "\r" + `x","a,b","say ""hi""",plain,-3," pad",` + "\r\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
	rec, err := csv.NewReader(&b).Read()
	if err != nil || rec[0] != "'=1+1" || rec[7] != `say "hi"` {
		t.Errorf("round trip: %q %v", rec, err)
	}
}

// deadlineConn records the write deadlines set on it.
type deadlineConn struct {
	net.Conn
	deadlines []time.Time
}

func (d *deadlineConn) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// An export gives each page the server's write timeout anew, before the
// page is written: a long export is not cut at the timeout, a stalled
// client still is.
func TestPacedWriterGivesEachPageTheTimeout(t *testing.T) {
	conn := &deadlineConn{}
	var out bytes.Buffer
	w := pacedWriter{w: &out, conn: conn, timeout: time.Minute}
	for _, page := range []string{"a,b\r\n", "c,d\r\n"} {
		before := time.Now()
		if _, err := w.Write([]byte(page)); err != nil {
			t.Fatal(err)
		}
		last := conn.deadlines[len(conn.deadlines)-1]
		if last.Before(before.Add(time.Minute)) || last.After(time.Now().Add(time.Minute)) {
			t.Errorf("deadline %v, want a minute after the write", last)
		}
	}
	if len(conn.deadlines) != 2 || out.String() != "a,b\r\nc,d\r\n" {
		t.Errorf("%d deadlines, wrote %q", len(conn.deadlines), out.String())
	}
}
