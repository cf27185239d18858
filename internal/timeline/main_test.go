package timeline_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func msDur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
