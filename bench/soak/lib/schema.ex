defmodule Soak.Schema do
  @moduledoc false

  # The soak's tables and one transform of every kind the engine has, each
  # with the query a fresh recompute of its target runs (over the target's
  # base columns: operators add and drop columns during the run).

  alias Trellis.Test.SimplePG

  @doc "Creates the sources, the writers' ledger and the regions a join reads."
  def create!(pg) do
    SimplePG.query!(pg, """
    CREATE TABLE regions (id int PRIMARY KEY, name text NOT NULL, tier int NOT NULL);
    INSERT INTO regions SELECT g, 'region ' || g, g % 2 FROM generate_series(0, 4) g;
    CREATE TABLE accounts (
      id bigint PRIMARY KEY, writer int NOT NULL, region int NOT NULL,
      balance bigint NOT NULL, status text NOT NULL, note text
    );
    CREATE INDEX ON accounts (writer);
    CREATE INDEX ON accounts (region);
    CREATE INDEX ON accounts (status);
    CREATE TABLE events (
      id bigint NOT NULL, writer int NOT NULL, region int NOT NULL, amount bigint NOT NULL,
      PRIMARY KEY (id, region)
    ) PARTITION BY LIST (region);
    CREATE TABLE events_r0 PARTITION OF events FOR VALUES IN (0);
    CREATE TABLE events_r1 PARTITION OF events FOR VALUES IN (1);
    CREATE TABLE events_r2 PARTITION OF events FOR VALUES IN (2, 3);
    CREATE INDEX ON events (writer);
    CREATE TABLE soak_ledger (writer int, seq bigint, PRIMARY KEY (writer, seq));
    """)
  end

  @doc "{name, TRANSFORM statement, recompute query, base columns} for each transform, in define order."
  def transforms do
    [
      {"soak_rich",
       "TRANSFORM soak_rich FROM accounts SELECT writer, balance, status WHERE balance > 400",
       "SELECT id, writer, balance, status FROM accounts WHERE balance > 400",
       "id, writer, balance, status"},
      {"soak_by_writer",
       "TRANSFORM soak_by_writer FROM accounts " <>
         "SELECT writer, count(*) AS n, sum(balance) AS total GROUP BY writer",
       "SELECT writer, count(*) AS n, sum(balance) AS total FROM accounts GROUP BY writer",
       "writer, n, total"},
      {"soak_placed",
       "TRANSFORM soak_placed FROM accounts a JOIN regions r ON a.region = r.id " <>
         "SELECT a.balance, r.name AS region_name, r.tier",
       "SELECT a.id, a.balance, r.name AS region_name, r.tier " <>
         "FROM accounts a JOIN regions r ON a.region = r.id", "id, balance, region_name, tier"},
      {"soak_by_region",
       "TRANSFORM soak_by_region FROM accounts a JOIN regions r ON a.region = r.id " <>
         "SELECT r.name, count(*) AS n, sum(a.balance) AS total GROUP BY r.name",
       "SELECT r.name, count(*) AS n, sum(a.balance) AS total " <>
         "FROM accounts a JOIN regions r ON a.region = r.id GROUP BY r.name", "name, n, total"},
      {"soak_rich_by_status",
       "TRANSFORM soak_rich_by_status FROM soak_rich " <>
         "SELECT status, count(*) AS n, sum(balance) AS total GROUP BY status",
       "SELECT status, count(*) AS n, sum(balance) AS total FROM accounts " <>
         "WHERE balance > 400 GROUP BY status", "status, n, total"},
      {"soak_event_totals",
       "TRANSFORM soak_event_totals FROM events " <>
         "SELECT writer, count(*) AS n, sum(amount) AS total GROUP BY writer",
       "SELECT writer, count(*) AS n, sum(amount) AS total FROM events GROUP BY writer",
       "writer, n, total"},
      {"soak_big_events",
       "TRANSFORM soak_big_events FROM events SELECT writer, amount WHERE amount > 50",
       "SELECT id, region, writer, amount FROM events WHERE amount > 50",
       "id, region, writer, amount"}
    ]
  end

  @doc "Rows that differ between a target's base columns and its recompute, both ways."
  def differences(pg, {name, _statement, query, columns}) do
    target = "SELECT #{columns} FROM #{name}"

    SimplePG.scalar!(pg, """
    SELECT count(*) FROM ((#{target} EXCEPT ALL #{query})
                          UNION ALL (#{query} EXCEPT ALL #{target})) d
    """)
    |> String.to_integer()
  end
end
