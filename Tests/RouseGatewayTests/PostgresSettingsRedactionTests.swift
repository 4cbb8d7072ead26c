import RouseGateway
import Testing

/// What the gateway logs about its database: never a password, wherever the URL carries it.
@Suite("PostgreSQL settings in logs: passwords redacted, sslmode unset for a remote host noticed")
struct PostgresSettingsRedactionTests {
    @Test(
        "displayName carries no password",
        arguments: [
            ("postgresql://rouse:s3cret@db.example/rouse", "postgresql://rouse:***@db.example/rouse"),
            ("postgresql://rouse:p@ss@db.example:5432/rouse", "postgresql://rouse:***@db.example:5432/rouse"),
            (
                "postgres://rouse:s3cret@[::1]/rouse?sslmode=verify-full",
                "postgres://rouse:***@[::1]/rouse?sslmode=verify-full"
            ),
            (
                "postgresql://rouse@db.example/rouse?password=s3cret&sslmode=require",
                "postgresql://rouse@db.example/rouse?password=***&sslmode=require"
            ),
            ("postgresql://db.example?user=rouse&password=s3cret", "postgresql://db.example?user=rouse&password=***"),
            ("postgresql://rouse@db.example/rouse", "postgresql://rouse@db.example/rouse"),
        ])
    func redacted(url: String, shown: String) {
        let name = PostgresSettings(url: url).displayName
        #expect(name == shown)
        #expect(!name.contains("s3cret") && !name.contains("ss@"))
    }

    @Test(
        "sslmode unset for a remote host is noticed; a local host, a socket or an explicit sslmode is not",
        arguments: [
            (PostgresSettings(url: "postgresql://rouse@db.example/rouse"), true),
            (PostgresSettings(host: "10.0.0.5", database: "rouse"), true),
            (PostgresSettings(url: "postgresql://rouse@db.example/rouse?sslmode=verify-full"), false),
            (PostgresSettings(host: "db.example", sslmode: "require"), false),
            (PostgresSettings(url: "postgresql://rouse@localhost/rouse"), false),
            (PostgresSettings(url: "postgresql://rouse@127.0.0.1:5432/rouse"), false),
            (PostgresSettings(url: "postgresql:///rouse"), false),
            (PostgresSettings(host: "127.0.0.2"), false),
            (PostgresSettings(url: "postgresql://rouse@[2001:db8::5]:5432/rouse"), true),
            (PostgresSettings(host: "/run/postgresql"), false),
        ])
    func sslmodeUnset(settings: PostgresSettings, warned: Bool) {
        #expect(settings.sslmodeUnsetForRemoteHost == warned, "\(settings.displayName)")
    }
}
