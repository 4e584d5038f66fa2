import FakeController
import BluetoothSecurity
import BluetoothWire
import Testing
@testable import BluetoothHost

/// The SecurityRuntime's rules, without a controller: which identity a pairing may keep,
/// what a link's security becomes on Encryption Change, how long a guesser waits.
@Suite struct SecurityRulesTests {
    static let irkV: UInt128 = 0x0123_4567_89AB_CDEF_0011_2233_4455_6677
    static let irkX: UInt128 = 0x7766_5544_3322_1100_FEDC_BA98_7654_3210
    static let victim = LEAddress(BluetoothAddress(rawValue: 0xC0DE_0000_0001), type: .random)

    static func rpa(_ irk: UInt128, _ random: UInt32 = 0x12_3456) throws -> LEAddress {
        LEAddress(try ResolvablePrivateAddress.make(irk: irk, random: random), type: .random)
    }

    static func claiming(_ identity: LEAddress?, irk: UInt128?) -> SMPPairingResult {
        SMPPairingResult(method: .justWorks, secureConnections: true, authenticated: false, keySize: 16, bonded: true,
                         peerLTK: SMPLongTermKey(key: 5), peerIdentityResolvingKey: irk, peerIdentityAddress: identity)
    }

    static func bond(_ identity: LEAddress, irk: UInt128?) -> Bond {
        Bond(identity: identity, result: claiming(identity, irk: irk), created: 0)
    }

    func dropped(_ r: SMPPairingResult) -> IdentityAdmission {
        var d = r
        d.peerIdentityAddress = nil
        d.peerIdentityResolvingKey = nil
        return .admitted(d)
    }

    @Test func aPairingWithoutIdentityIsKeptAsItIs() {
        let r = Self.claiming(nil, irk: nil)
        #expect(SecurityRuntime.admittedIdentity(r, from: peerA, bonded: .success(nil)) == .admitted(r))
    }

    @Test func aPeerFromItsIdentityAddressKeepsThatIdentityAndNoOther() {
        let own = Self.claiming(Self.victim, irk: Self.irkV)
        #expect(SecurityRuntime.admittedIdentity(own, from: Self.victim, bonded: .success(nil)) == .admitted(own))
        // The controller's resolved type counts as the address it names.
        let resolved = LEAddress(Self.victim.address, type: .randomIdentity)
        #expect(SecurityRuntime.admittedIdentity(own, from: resolved, bonded: .success(nil)) == .admitted(own))
        // Its own address, bonded: proven by coming from it (re-pairing rules apply elsewhere).
        #expect(SecurityRuntime.admittedIdentity(own, from: Self.victim, bonded: .success(Self.bond(Self.victim, irk: Self.irkV))) == .admitted(own))
        let other = Self.claiming(Self.victim, irk: Self.irkX)
        #expect(SecurityRuntime.admittedIdentity(other, from: peerA, bonded: .success(nil)) == dropped(other))
    }

    @Test("An identity address must be public or static random (Core Vol 6 Part B §1.3)")
    func anIdentityThatIsNoIdentityAddressIsDropped() throws {
        let nrpa = LEAddress(BluetoothAddress(rawValue: 0x0000_1234_5678), type: .random)
        let r = Self.claiming(nrpa, irk: Self.irkX)
        #expect(SecurityRuntime.admittedIdentity(r, from: nrpa, bonded: .success(nil)) == dropped(r))
        let fromRPA = Self.claiming(try Self.rpa(Self.irkX), irk: Self.irkX)
        #expect(SecurityRuntime.admittedIdentity(fromRPA, from: try Self.rpa(Self.irkX), bonded: .success(nil)) == dropped(fromRPA))
    }

    @Test func aPeerBehindAPrivateAddressMustDistributeTheIRKThatResolvesIt() throws {
        let r = Self.claiming(Self.victim, irk: Self.irkV)
        #expect(SecurityRuntime.admittedIdentity(r, from: try Self.rpa(Self.irkV), bonded: .success(nil)) == .admitted(r))
        #expect(SecurityRuntime.admittedIdentity(r, from: try Self.rpa(Self.irkX), bonded: .success(nil)) == dropped(r))
        let zero = Self.claiming(Self.victim, irk: 0)
        #expect(SecurityRuntime.admittedIdentity(zero, from: try Self.rpa(0), bonded: .success(nil)) == dropped(zero))
    }

    @Test("Identity takeover: a bonded identity claimed with another IRK is refused")
    func aBondedIdentityMustBeProvenByItsBond() throws {
        let impostor = Self.claiming(Self.victim, irk: Self.irkX)
        let from = try Self.rpa(Self.irkX)
        guard case .refused(let why) = SecurityRuntime.admittedIdentity(impostor, from: from, bonded: .success(Self.bond(Self.victim, irk: Self.irkV))) else {
            Issue.record("the claim was admitted")
            return
        }
        #expect(why.contains("\(Self.victim)") && why.contains("does not resolve"))
        // A bond without an IRK proves nothing behind a private address either.
        #expect(SecurityRuntime.admittedIdentity(impostor, from: from, bonded: .success(Self.bond(Self.victim, irk: nil))) != .admitted(impostor))
        // The device itself, with the bond's IRK, from a new private address: admitted.
        let real = Self.claiming(Self.victim, irk: Self.irkV)
        #expect(SecurityRuntime.admittedIdentity(real, from: try Self.rpa(Self.irkV, 0x3F_0001), bonded: .success(Self.bond(Self.victim, irk: Self.irkV))) == .admitted(real))
    }

    @Test func aBondThatCannotBeReadProvesNothing() throws {
        let r = Self.claiming(Self.victim, irk: Self.irkV)
        let broken = BondStoreError(path: "/var/lib/hcigatt/bonds/x", message: "bad json")
        guard case .refused(let why) = SecurityRuntime.admittedIdentity(r, from: try Self.rpa(Self.irkV), bonded: .failure(broken)) else {
            Issue.record("admitted")
            return
        }
        #expect(why.contains("/var/lib/hcigatt/bonds/x"))
    }

    @Test("Repeated Attempts (Core Vol 3 Part H §2.3.6): the wait doubles from 2 s to 64 s")
    func repeatedAttemptsWaitDoubles() {
        #expect((1 ... 8).map(RepeatedAttempts.wait(afterFailures:)).map { $0 / 1_000_000_000 } == [2, 4, 8, 16, 32, 64, 64, 64])
        var a = RepeatedAttempts()
        #expect(a.remaining(peerA, now: 0) == 0)
        a.failed(peerA, now: 10)
        #expect(a.remaining(peerA, now: 10) == 2_000_000_000 && a.remaining(peerA, now: 2_000_000_010) == 0)
        a.failed(peerA, now: 3_000_000_000)
        #expect(a.remaining(peerA, now: 3_000_000_000) == 4_000_000_000, "the second failure in a row waits longer")
        #expect(a.remaining(Self.victim, now: 3_000_000_000) == 0, "per peer")
        a.succeeded(peerA)
        #expect(a.remaining(peerA, now: 3_000_000_000) == 0)
    }

    @Test func repeatedAttemptsForgetsPeersWhoseWaitIsOverWhenFull() {
        var a = RepeatedAttempts()
        for i in 0 ..< RepeatedAttempts.capacity {
            a.failed(LEAddress(BluetoothAddress(rawValue: UInt64(i)), type: .public), now: 0)
        }
        a.failed(peerA, now: 10_000_000_000)
        #expect(a.remaining(LEAddress(BluetoothAddress(rawValue: 0), type: .public), now: 0) == 0)
        #expect(a.remaining(peerA, now: 10_000_000_000) == 2_000_000_000)
    }

    @Test func anEncryptionWithABondGivesTheLinkTheBondsSecurity() {
        var s = SecurityRuntime(resolving: [])
        var bond = Self.bond(Self.victim, irk: nil)
        bond.authenticated = true
        s.encrypting(0x40, with: bond)
        let (security, waiters) = s.encryptionChanged(0x40, status: .success, enabled: true, keySize: 12, current: .unencrypted)
        #expect(waiters.isEmpty)
        #expect(security == LinkSecurity(encrypted: true, keySize: 12, authenticated: true, secureConnections: true, bonded: true))
        // Once only: the next change (a pairing's own encryption) keeps what the link has.
        let current = LinkSecurity(encrypted: true, keySize: 16, authenticated: false, secureConnections: true, bonded: false)
        let again = s.encryptionChanged(0x40, status: .success, enabled: true, keySize: nil, current: current)
        #expect(again.security == current)
    }

    @Test func aFailedEncryptionChangesNothingAndEncryptionOffLeavesTheLinkPlain() {
        var s = SecurityRuntime(resolving: [])
        s.encrypting(0x40, with: Self.bond(Self.victim, irk: nil))
        let failed = s.encryptionChanged(0x40, status: .pINOrKeyMissing, enabled: false, keySize: nil, current: .unencrypted)
        #expect(failed.security == nil)
        #expect(s.encryptions.isEmpty, "a failed encryption forgets the bond's security")
        let on = LinkSecurity(encrypted: true, keySize: 16)
        let off = s.encryptionChanged(0x40, status: .success, enabled: false, keySize: nil, current: on)
        #expect(off.security == .unencrypted)
    }

    @Test func aBondedPeersPrivateAddressResolvesToItsIdentity() throws {
        var s = SecurityRuntime(resolving: [AddressResolver.Entry(irk: Self.irkV, identity: Self.victim)])
        let v = s.identity(of: try Self.rpa(Self.irkV)), x = s.identity(of: try Self.rpa(Self.irkX))
        let resolved = s.identity(of: LEAddress(peerA.address, type: .publicIdentity))
        #expect(v == Self.victim && x == nil && resolved == peerA)
        let zero = s.learn(irk: 0, identity: peerA), learned = s.learn(irk: Self.irkX, identity: peerA)
        #expect(!zero, "the all-zero IRK resolves nothing")
        #expect(learned)
        let now = s.identity(of: try Self.rpa(Self.irkX))
        #expect(now == peerA)
    }

    @Test func aPeerStartedPairingOverABondMustBeAsStrongAndAuthenticatedUnlessAllowed() {
        let plain = SMPConfiguration()
        var jw = Self.bond(Self.victim, irk: nil)
        jw.authenticated = false
        jw.secureConnections = false
        #expect(SecurityRuntime.repairing(plain, over: jw, allowsRepairing: false).mitm, "Just Works over a bond: refused")
        #expect(!SecurityRuntime.repairing(plain, over: jw, allowsRepairing: true).mitm, "allowed: Just Works again")
        var strong = jw
        strong.authenticated = true
        strong.secureConnections = true
        let c = SecurityRuntime.repairing(plain, over: strong, allowsRepairing: true)
        #expect(c.mitm && c.secureConnectionsOnly, "never weaker than the bond, allowed or not")
    }
}
