package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileBytes is the largest config file Discover, the writer and
// FileCredentials read: 16 MiB. Hand-written configs are a few KiB, but
// ~/.claude.json also holds Claude Code's per-project state and can grow
// to several MiB, so the limit leaves it room. A larger file is refused
// with ErrFileTooLarge; reading stops one byte past the limit, so a file
// that never ends costs at most the limit.
const MaxFileBytes = 16 << 20

// Sentinel errors of ReadFile.
var (
	// ErrNotRegularFile marks a config path that resolves to something
	// other than a regular file: a directory, a device, a FIFO or a socket.
	ErrNotRegularFile = errors.New("not a regular file")
	// ErrFileTooLarge marks a config file larger than MaxFileBytes.
	ErrFileTooLarge = errors.New("file too large")
)

// OpenFile opens a config file for reading. The path may be a symlink, but
// what it resolves to must be a regular file: anything else is
// ErrNotRegularFile. The file is stat'ed before it is opened and opened
// without blocking, so a FIFO or a device is refused without waiting for a
// writer and without reading from it. An absent file is an error matching
// fs.ErrNotExist.
func OpenFile(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: if the path was swapped for a FIFO since the stat, the
	// open does not wait for a writer; the check below refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err = f.Stat()
	if err == nil {
		err = regular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// regular refuses what is not a regular file, naming what it is.
func regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	kind := "special file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (a %s)", ErrNotRegularFile, kind)}
}

// ReadFile reads a config file opened with OpenFile, at most MaxFileBytes
// of it: a larger file is ErrFileTooLarge, naming the file and the limit,
// after reading only MaxFileBytes+1 bytes.
func ReadFile(path string) ([]byte, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(data) > MaxFileBytes {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than the limit of %d bytes (%d MiB)", ErrFileTooLarge, MaxFileBytes, MaxFileBytes>>20)}
	}
	return data, nil
}
