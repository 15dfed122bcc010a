"""The settings' error, apart from console.config (which reads the file through console.config_schema, which
raises it): both import it from here, so neither imports the other back. Imported by users as
console.config.ConfigError."""


class ConfigError(Exception):
    """The config file is unreadable or has a bad value; the message names the file, line and key."""
