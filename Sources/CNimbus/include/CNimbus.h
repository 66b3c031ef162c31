// C shim for the few Linux calls Swift cannot reach directly: _GNU_SOURCE declarations
// and variadic functions (ioctl). Each function is a thin pass-through returning -1/errno.
#ifndef CNIMBUS_H
#define CNIMBUS_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/xattr.h>  /* lgetxattr & co.: not in Swift's Glibc module */
#include <sys/fsuid.h>  /* setfsuid: lets tests drop file-access privileges on one thread */
#include <malloc.h>     /* malloc_trim: not in Swift's Glibc module */

/// renameat2(2). flags: CNIMBUS_RENAME_NOREPLACE, CNIMBUS_RENAME_EXCHANGE.
int cnimbus_renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
extern const unsigned int CNIMBUS_RENAME_NOREPLACE;
extern const unsigned int CNIMBUS_RENAME_EXCHANGE;

/// copy_file_range(2) with explicit offsets; returns bytes copied or -1.
ssize_t cnimbus_copy_file_range(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len);

/// ioctl(dest, FICLONE, src): reflink the whole file. Returns 0 or -1.
int cnimbus_ficlone(int dest_fd, int src_fd);

/// getsockopt(SO_PEERCRED): the peer's pid, uid and gid. Returns 0 or -1.
int cnimbus_peercred(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid);

/// posix_spawnp(3) for a program run on the user's behalf: it gets stdin, stdout and stderr
/// only (every other descriptor is closed in the child), default signal actions and an
/// empty signal mask. Returns 0 or an errno value.
int cnimbus_spawnp(pid_t *pid, const char *file, char *const argv[], char *const envp[]);

/// syncfs(2): flush one filesystem.
int cnimbus_syncfs(int fd);

/// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: the path may
/// not leave dirfd nor pass through any symlink. Returns the fd or -1 (ENOSYS on old kernels).
int cnimbus_openat_beneath(int dirfd, const char *path, int flags, unsigned int mode);

/// inotify event header layout, so Swift can parse the byte stream without guessing.
extern const size_t CNIMBUS_INOTIFY_EVENT_SIZE;

/// open(2) flags that need _GNU_SOURCE.
extern const int CNIMBUS_O_PATH;
extern const int CNIMBUS_O_NOATIME;
extern const int CNIMBUS_O_TMPFILE;

/// fcntl(F_SETLEASE, F_RDLCK) then F_UNLCK: 1 when a read lease could be taken (nobody has
/// the file open for writing), 0 when it could not for that reason, -1 when leases are not
/// possible here (errno says why).
int cnimbus_probe_read_lease(int fd);

/// pipe2(fds, O_CLOEXEC).
int cnimbus_pipe_cloexec(int fds[2]);

#endif
