"""Security: who a client is (authentication), what it may do (authorization), and TLS.

One concept per module, as Apache Pulsar splits them:
    settings         the security keys checked together at start-up (ConfigError naming the key)
    keys             key material from Pulsar's key URLs (file:, data:, base64)
    token_provider   AuthenticationProviderToken: JWTs (HS*, RS*, PS*, ES*) -> role
    tls_provider     AuthenticationProviderTls: the client certificate's CN -> role
    state            AuthState: a role, its auth method and when its credentials expire
    errors           AuthenticationFailedError, NotAuthorizedError (with their ServerError values)
    authentication   AuthenticationService: the configured providers, by auth method name
    connection_auth  one connection's authenticated role, its expiry and the refresh challenge
    permissions      namespace and topic grants, kept in the namespace policies (auth_policies)
    authorization    AuthorizationService: super-users, tenant admins, produce/consume/lookup
    tls_context      the servers' SSL contexts, reloaded when the certificate files change
    web              the web service's authentication and authorization middleware
    service          BrokerSecurity: everything above, built from the broker's config
"""
