import * as SessionStoreSuite from "@parley/testing/SessionStoreSuite"
import { pgDatabase, sqliteDatabase } from "./databases.js"

SessionStoreSuite.suite("SqlStore.layerSqlite", sqliteDatabase(), { canCorrupt: true })

SessionStoreSuite.suite("SqlStore.layerPg", pgDatabase(), { canCorrupt: true })
