package host

import (
	"testing"
	"testing/synctest"
)

// TestConnectStatsWithinCap: the connect gauge sees the attempts of a
// session start, never more at once than the cap, and none once they are
// done.
func TestConnectStatsWithinCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newMemRuntime(t, map[string]string{"a": "", "b": "", "c": "", "d": ""}, Options{ConnectConcurrency: 2})
		sess, err := env.rt.OpenSession(t.Context(), SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep := sess.StartReport(); len(rep.Ready) != 4 {
			t.Fatalf("ready = %v", rep.Ready)
		}
		st := env.rt.ConnectStats()
		if st.Peak < 1 || st.Peak > 2 || st.Running != 0 {
			t.Fatalf("ConnectStats = %+v, want 1 <= Peak <= 2 and Running 0", st)
		}
		env.rt.ResetConnectPeak()
		if st := env.rt.ConnectStats(); st.Peak != 0 {
			t.Fatalf("after ResetConnectPeak: %+v", st)
		}
	})
}
