import FakeController
import BluetoothSecurity
import BluetoothWire
import Glibc
import Testing
@testable import BluetoothHost

@Suite struct BondStoreTests {
    func tempDir() -> String {
        var template = Array("/tmp/hcigatt-bonds-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return p.map { String(cString: $0) } ?? "/tmp"
    }

    let peer = LEAddress(BluetoothAddress(rawValue: 0xF0F1_F2F3_F401), type: .public)

    func sample(sc: Bool) -> Bond {
        let r = SMPPairingResult(method: .justWorks, secureConnections: sc, authenticated: !sc, keySize: 16, bonded: true,
                                 peerLTK: SMPLongTermKey(key: 0x0011_2233_4455_6677_8899_AABB_CCDD_EEFF, ediv: sc ? 0 : 0x1234, rand: sc ? 0 : 0xDEAD_BEEF),
                                 localLTK: sc ? nil : SMPLongTermKey(key: 42, ediv: 7, rand: 9),
                                 peerIdentityResolvingKey: 0x1000, peerIdentityAddress: peer, peerSignatureKey: 5)
        return Bond(identity: peer, result: r, created: 1_800_000_000)
    }

    @Test(arguments: [false, true])
    func aBondSurvivesTheRoundTripWithPrivatePermissions(sc: Bool) throws {
        let dir = tempDir() + "/nested/bonds"
        let store = BondStore(directory: dir)
        try store.save(sample(sc: sc))
        #expect(try store.bond(for: peer) == sample(sc: sc))
        #expect(try store.all() == [sample(sc: sc)])
        var st = stat()
        #expect(stat(dir, &st) == 0 && st.st_mode & 0o777 == 0o700)
        #expect(stat(store.path(for: peer), &st) == 0 && st.st_mode & 0o777 == 0o600)
        // The keys a peripheral answers an LTK request with.
        let b = sample(sc: sc)
        if sc {
            #expect(b.peripheralKey(ediv: 0, rand: 0) == b.peerLTK?.key)
        } else {
            #expect(b.peripheralKey(ediv: 7, rand: 9) == 42 && b.peripheralKey(ediv: 0, rand: 0) == nil)
        }
        #expect(try store.remove(peer) && !(try store.remove(peer)))
        #expect(try store.bond(for: peer) == nil)
    }

    @Test func aLeftOverTemporaryFileFromACrashLeavesTheOldBondInPlace() throws {
        let dir = tempDir()
        let store = BondStore(directory: dir)
        try store.save(sample(sc: true))
        // A crash between write and rename leaves a hidden temporary: ignored, the bond intact.
        let fd = open(dir + "/.123-456.tmp", O_WRONLY | O_CREAT, 0o600)
        _ = write(fd, "version=1\nhalf", 14)
        close(fd)
        #expect(try store.all() == [sample(sc: true)])
        // Replacing writes the new bond whole.
        var newer = sample(sc: true)
        newer.created = 1_900_000_000
        try store.save(newer)
        #expect(try store.bond(for: peer)?.created == 1_900_000_000)
    }

    @Test func aCorruptFileIsAnErrorNamingItAndIsLeftAlone() throws {
        let dir = tempDir()
        let store = BondStore(directory: dir)
        let path = store.path(for: peer)
        let text = "version=1\nidentity=F0:F1:F2:F3:F4:01/public\nsecure_connections=1\nauthenticated=0\nltk=zz\n"
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        #expect { try store.bond(for: peer) } throws: { ($0 as? BondStoreError)?.path == path && "\($0)".contains("ltk is not 32 hex digits") }
        #expect { try store.all() } throws: { ($0 as? BondStoreError)?.path == path }
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_size == text.utf8.count, "not dropped, not overwritten")
    }

    @Test("Only a file that does not exist is no bond: ENOTDIR and ELOOP are errors naming the path")
    func aPathThatCannotBeReachedIsAnErrorNotAbsence() throws {
        // A bond directory that is a file (ENOTDIR): on main, access() failed and this read
        // as "no bond", so the link went in clear. (EACCES reads alike; the tests run as root.)
        let dir = tempDir()
        let notADirectory = dir + "/bonds"
        close(open(notADirectory, O_WRONLY | O_CREAT, 0o600))
        let store = BondStore(directory: notADirectory)
        #expect { try store.bond(for: peer) } throws: { e in
            (e as? BondStoreError)?.path == notADirectory && "\(e)".contains("not a directory")
        }
        #expect { try store.read(peer, kind: "gatt-cache") } throws: { ($0 as? BondStoreError)?.path == notADirectory }
        #expect { try store.contains(peer, kind: "gatt-cache") } throws: { $0 is BondStoreError }
        #expect { try store.localIdentityResolvingKey() } throws: { ($0 as? BondStoreError)?.path == notADirectory }
        #expect { try store.all() } throws: { ($0 as? BondStoreError)?.path == notADirectory }
        // A bond file that is a symbolic link to itself (ELOOP).
        let looping = BondStore(directory: dir)
        #expect(symlink(looping.path(for: peer), looping.path(for: peer)) == 0)
        #expect { try looping.bond(for: peer) } throws: { e in
            (e as? BondStoreError)?.path == looping.path(for: peer) && "\(e)".contains("symbolic links")
        }
        // Absent is still absent.
        #expect(try BondStore(directory: dir + "/none").bond(for: peer) == nil)
        #expect(try looping.contains(LEAddress(peer.address, type: .random), kind: "bond") == false)
    }

    @Test("A bond directory others may write to, or that another user owns, is refused naming its mode")
    func aDirectoryOthersMayWriteIsRefused() throws {
        // On main any mode and owner was taken: anyone who could write there could plant a
        // bond (or its IRK) that hcigatt would then trust.
        let dir = tempDir()
        let store = BondStore(directory: dir)
        try store.save(sample(sc: true))
        for mode: mode_t in [0o777, 0o770, 0o702] {
            #expect(chmod(dir, mode) == 0)
            #expect { try store.bond(for: peer) } throws: { e in
                (e as? BondStoreError)?.path == dir && "\(e)".contains("mode 0\(String(mode, radix: 8)): others may write to it")
            }
            #expect { try store.save(sample(sc: true)) } throws: { ($0 as? BondStoreError)?.path == dir }
            #expect { try store.all() } throws: { ($0 as? BondStoreError)?.path == dir }
        }
        #expect(chmod(dir, 0o755) == 0)
        #expect(try store.bond(for: peer) == sample(sc: true), "0755: only we write")
        #expect(chown(dir, 65534, 65534) == 0)
        #expect { try store.bond(for: peer) } throws: { e in "\(e)".contains("owned by uid 65534, not by this user") }
        #expect(chown(dir, geteuid(), getegid()) == 0)
        _ = try? store.remove(peer)
    }
}
