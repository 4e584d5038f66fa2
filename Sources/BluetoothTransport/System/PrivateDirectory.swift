#if canImport(Glibc)
import Glibc
#endif

/// Why `path` is not a directory only we can write to, or nil when it is (or does not
/// exist yet: it is made 0700 then). Bonds, the spool and its marks sit in such
/// directories: one another user owns, or that others may write, lets them plant or swap
/// files (a bond, a symbolic link where a file is written as root).
public func privateDirectoryProblem(_ path: String) -> String? {
    var st = stat()
    // Followed: a link to a directory of ours (/var/lib on a data partition) is fine.
    guard stat(path, &st) == 0 else {
        return errno == ENOENT ? nil : "cannot look at it: \(String(cString: strerror(errno)))"
    }
    let mode = String(UInt32(st.st_mode) & 0o7777, radix: 8)
    guard st.st_mode & S_IFMT == S_IFDIR else { return "not a directory" }
    guard st.st_uid == geteuid() else {
        return "owned by uid \(st.st_uid), not by this user (uid \(geteuid())): refused"
    }
    guard st.st_mode & 0o022 == 0 else {
        return "mode 0\(mode): others may write to it (chmod go-w \(path))"
    }
    return nil
}
