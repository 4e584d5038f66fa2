import BluetoothHost
import BluetoothWire
import Glibc
import Testing
@testable import BluetoothGATT

@Suite struct GATTBondedClientsTests {
    let identity = LEAddress(BluetoothAddress(rawValue: 0xD0D1_D2D3_D401), type: .public)

    func directory() -> String {
        var template = Array("/tmp/hcigatt-gatt-bonds-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    }

    @Test func statesSurviveANewInstanceAndUnpairRemovesThem() async throws {
        let dir = directory()
        let state = ATTBondedClientState(databaseHash: Array(0 ..< 16), configurations: [0x0009: 2, 0x0011: 1],
                                         serviceChanged: 2, features: .robustCaching, changeAware: false)
        let clients = GATTBondedClients(store: BondStore(directory: dir))
        clients.update(state, for: identity)
        await clients.flush()
        #expect(clients.writeFailures.isEmpty)
        let path = "\(dir)/D0D1D2D3D401-public.gatt-server"
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let again = GATTBondedClients(store: BondStore(directory: dir))
        #expect(again.state(for: identity) == state && again.loadFailures.isEmpty)
        #expect(try BondStore(directory: dir).remove(identity) == false, "no bond file, but the companion went")
        #expect(access(path, F_OK) != 0)
        rmdir(dir)
    }

    @Test func aCorruptFileIsNamedAndLeftAlone() throws {
        let dir = directory()
        let path = "\(dir)/D0D1D2D3D401-public.gatt-server"
        for junk in ["version=1\ndatabase_hash=00\n", "version=2\n", "nonsense", "version=1\ndatabase_hash=000102030405060708090a0b0c0d0e0f\ncccd=zz\nservice_changed=0\nfeatures=0\nchange_aware=1\n"] {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = junk.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, junk.utf8.count) }
            close(fd)
            let clients = GATTBondedClients(store: BondStore(directory: dir))
            #expect(clients.state(for: identity) == nil)
            #expect(clients.loadFailures.count == 1 && clients.loadFailures.first?.path == path, "\(junk)")
        }
        unlink(path)
        rmdir(dir)
    }

    @Test("Unreadable SignCounters refuse signatures until a new bond removes the file, with no restart")
    func unreadableCountersClearWhenANewBondRemovesThem() async throws {
        // The flag used to stay until the server restarted: a re-paired client's signed
        // writes were refused although its new CSRK starts over.
        let dir = directory()
        let path = "\(dir)/D0D1D2D3D401-public.sign-counters"
        let junk = "version=1\npeer=not-a-number\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = junk.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, junk.utf8.count) }
        close(fd)
        let store = BondStore(directory: dir)
        let clients = GATTBondedClients(store: store)
        #expect(clients.countersUnreadable(for: identity))
        #expect(clients.takeLocalSignCounter(for: identity, key: 7) == nil)
        clients.notePeerSignCounter(5, for: identity, key: 7)
        await clients.flush()
        #expect(clients.countersUnreadable(for: identity), "still unreadable: nothing overwrote it")
        try store.remove(identity, kind: GATTBondedClients.countersKind)  // what saveUnlessWeaker does
        #expect(!clients.countersUnreadable(for: identity))
        #expect(clients.takeLocalSignCounter(for: identity, key: 7) == 0)
        clients.notePeerSignCounter(5, for: identity, key: 8)
        await clients.flush()
        #expect(GATTBondedClients(store: store).signCounters(for: identity) == .init(peer: 5, local: 0, peerKey: 8, localKey: 7))
        unlink(path)
        rmdir(dir)
    }
}
