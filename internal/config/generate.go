package config

// The flag reference of docs/configuration.md (ReferenceMarkdown);
// TestConfigurationDocIsCurrent fails when it is not what this writes.
//go:generate go run ./gendoc ../../docs/configuration.md
