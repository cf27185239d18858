package main

import (
	"fmt"
	"os"
	"syscall"
)

// signalNames are the names process.exited uses for the signals a stop
// sends.
var signalNames = map[syscall.Signal]string{
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGHUP:  "SIGHUP",
}

// exitStatus renders how a process ended as process.exited.status does:
// "exit status <code>" or "killed by <signal name>".
func exitStatus(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if name, ok := signalNames[ws.Signal()]; ok {
			return "killed by " + name
		}
		return fmt.Sprintf("killed by signal %d", int(ws.Signal()))
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}
