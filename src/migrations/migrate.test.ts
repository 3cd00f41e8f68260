import { describe, expect, it } from "vitest";
import { ErrandError } from "../errors.js";
import { migrations } from "./index.js";
import { checkMigrations, latestVersion } from "./migrate.js";

describe("the migrations shipped as code", () => {
  it("are numbered 1…n in order, each with its SQL", () => {
    expect(checkMigrations(migrations)).toBe(migrations);
    expect(latestVersion()).toBe(migrations.length);
    expect(migrations.length).toBeGreaterThanOrEqual(6);
    for (const migration of migrations) {
      expect(migration.name).toMatch(/^[a-z0-9-]+$/);
      expect(migration.sql).toContain("{{schema}}.");
    }
  });

  it("an empty list fails loudly instead of migrating nothing", () => {
    expect(() => checkMigrations([])).toThrow(ErrandError);
    expect(() => checkMigrations([])).toThrow(/found no migrations/);
  });

  it("a gap or a wrong order is refused, naming the migration", () => {
    const [first, second] = migrations;
    expect(() => checkMigrations([second!, first!])).toThrow(/expected version 1 at position 1, found 2 \(schedules\)/);
    expect(() => checkMigrations([first!, { ...second!, version: 3 }])).toThrow(/expected version 2/);
  });
});
