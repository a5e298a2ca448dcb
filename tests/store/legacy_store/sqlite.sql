CREATE TABLE agents (
	agent_id VARCHAR(64) NOT NULL, 
	config JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (agent_id)
);

CREATE TABLE toolgroups (
	toolgroup_id VARCHAR(200) NOT NULL, 
	provider_id VARCHAR(100) NOT NULL, 
	mcp_uri TEXT, 
	args JSON, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (toolgroup_id)
);

CREATE TABLE sessions (
	session_id VARCHAR(64) NOT NULL, 
	agent_id VARCHAR(64) NOT NULL, 
	name TEXT NOT NULL, 
	started_at DATETIME NOT NULL, 
	active_turn_id VARCHAR(64), 
	PRIMARY KEY (session_id), 
	FOREIGN KEY(agent_id) REFERENCES agents (agent_id) ON DELETE CASCADE
);

CREATE INDEX ix_sessions_agent_id ON sessions (agent_id);

CREATE TABLE turns (
	turn_id VARCHAR(64) NOT NULL, 
	session_id VARCHAR(64) NOT NULL, 
	agent_id VARCHAR(64) NOT NULL, 
	status VARCHAR(32) NOT NULL, 
	input_messages JSON NOT NULL, 
	output_message JSON, 
	started_at DATETIME NOT NULL, 
	completed_at DATETIME, 
	error TEXT, 
	PRIMARY KEY (turn_id), 
	FOREIGN KEY(session_id) REFERENCES sessions (session_id) ON DELETE CASCADE
);

CREATE INDEX ix_turns_session_order ON turns (session_id, started_at);

CREATE TABLE steps (
	turn_id VARCHAR(64) NOT NULL, 
	position INTEGER NOT NULL, 
	step_id VARCHAR(64) NOT NULL, 
	body JSON NOT NULL, 
	PRIMARY KEY (turn_id, position), 
	FOREIGN KEY(turn_id) REFERENCES turns (turn_id) ON DELETE CASCADE
);

CREATE TABLE turn_events (
	event_id INTEGER NOT NULL, 
	turn_id VARCHAR(64) NOT NULL, 
	"key" VARCHAR(200) NOT NULL, 
	body JSON NOT NULL, 
	PRIMARY KEY (event_id), 
	CONSTRAINT uq_turn_events_key UNIQUE (turn_id, "key"), 
	FOREIGN KEY(turn_id) REFERENCES turns (turn_id) ON DELETE CASCADE
);

CREATE INDEX ix_turn_events_tail ON turn_events (turn_id, event_id);
