package conformance

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/bench/speed"
)

// MatrixSpeedFile is the side-by-side speed report of the clients
// (`harness bench -impl ...`, written by .ci/speed -update), stored in the
// drivers' directory beside their verdict reports.
const MatrixSpeedFile = "speed.json"

// ReadMatrixSpeed reads dir/MatrixSpeedFile; ok is false when there is
// none.
func ReadMatrixSpeed(dir string) (rep speed.Report, ok bool, err error) {
	rep, err = speed.ReadJSON(filepath.Join(dir, MatrixSpeedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return rep, false, nil
	}
	if err != nil {
		return rep, false, fmt.Errorf("matrix: %w", err)
	}
	return rep, true, nil
}

// RenderMatrixSpeed renders the matrix's speed section from rep.
func RenderMatrixSpeed(rep speed.Report) string {
	var b strings.Builder
	b.WriteString("\n## Speed side by side\n\n")
	speed.WriteMarkdown(&b, rep)
	return b.String()
}
